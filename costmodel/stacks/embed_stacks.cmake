# Writes OUT: one C++ initializer {"file.json", R"(text)"}, per stack file, so
# that the stacks travel inside every binary (costmodel/stacks/stack_registry.cc
# includes it). Called by costmodel/CMakeLists.txt with -DOUT= -DFILES=a|b|c.
set(body "// Generated from costmodel/stacks/*.json by embed_stacks.cmake.\n")
string(REPLACE "|" ";" FILES "${FILES}")
foreach(path IN LISTS FILES)
  get_filename_component(name "${path}" NAME)
  file(READ "${path}" text)
  string(APPEND body "{\"${name}\", R\"tessera_stack(${text})tessera_stack\"},\n")
endforeach()
file(WRITE "${OUT}.tmp" "${body}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
