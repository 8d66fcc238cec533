// A shared library opened at run time (dlopen) and closed on every path:
// how the agent reaches the CUDA driver and NVML without linking them, so
// that one agent binary runs on hosts with and without GPUs.
//
//   DynamicLibrary nvml("libnvidia-ml.so.1");
//   auto init = nvml.Get<int (*)()>("nvmlInit_v2");  // null when absent
#pragma once

#include <dlfcn.h>

namespace tessera::agents {

class DynamicLibrary {
 public:
  explicit DynamicLibrary(const char* name) : handle_(dlopen(name, RTLD_NOW)) {}
  ~DynamicLibrary() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;

  bool loaded() const { return handle_ != nullptr; }
  // The symbol as a function pointer of type F; null when it is missing.
  template <typename F>
  F Get(const char* symbol) const {
    return handle_ == nullptr ? nullptr
                              : reinterpret_cast<F>(dlsym(handle_, symbol));
  }

 private:
  void* handle_;
};

}  // namespace tessera::agents
