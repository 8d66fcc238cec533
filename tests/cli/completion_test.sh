#!/bin/bash
# `tessera completion bash|zsh`: the bash script, sourced in bash, completes
# commands from the command table and each command's flags and choices; the
# zsh script parses (zsh -n), skipped with a message where zsh is absent.
#   completion_test.sh TESSERA bash|zsh
set -u
tessera=$1
shell=$2
fail() { echo "FAIL: $*"; exit 1; }

if [[ $shell == zsh ]]; then
  if ! command -v zsh >/dev/null; then
    echo "SKIP: zsh is not installed (apt-get install zsh)"
    exit 77
  fi
  script=$(mktemp)
  trap 'rm -f "$script"' EXIT
  "$tessera" completion zsh >"$script" || fail "tessera completion zsh exited $?"
  zsh -n "$script" || fail "zsh -n rejects the script"
  grep -q "^#compdef tessera" "$script" || fail "no #compdef line"
  grep -q "'--sort\[" "$script" || fail "no --sort spec for trials"
  # compinit, then the script: _tessera is defined and bound to tessera.
  zsh -f -c "autoload -U compinit && compinit -u -D && source '$script' &&
             [[ \${_comps[tessera]} == _tessera ]]" ||
    fail "sourcing the script in zsh does not bind _tessera to tessera"
  echo "zsh: the script parses and binds _tessera"
  exit 0
fi

source <("$tessera" completion bash) || fail "the bash script does not source"
complete -p tessera | grep -q -- "-F _tessera" || fail "tessera not bound"

# Completes `$@` (the last word is the one being completed) into REPLY.
complete_words() {
  COMP_WORDS=("$@")
  COMP_CWORD=$(($# - 1))
  COMPREPLY=()
  _tessera
  REPLY="${COMPREPLY[*]}"
}

complete_words tessera pl
[[ $REPLY == "plan" ]] || fail "tessera pl<TAB>: '$REPLY', want 'plan'"
complete_words tessera trials --so
[[ $REPLY == "--sort" ]] || fail "tessera trials --so<TAB>: '$REPLY'"
complete_words tessera trials -o c
[[ $REPLY == "csv" ]] || fail "tessera trials -o c<TAB>: '$REPLY'"
complete_words tessera best 7 --objective ""
[[ $REPLY == "throughput energy" ]] || fail "--objective <TAB>: '$REPLY'"
complete_words tessera plan --seq-
[[ $REPLY == "--seq-len" ]] || fail "tessera plan --seq-<TAB>: '$REPLY'"
# Every command of `tessera --help` completes after `tessera`.
complete_words tessera ""
for command in $("$tessera" --help | sed -n '/^Commands:/,/^$/p' |
                 awk 'NR > 1 && NF { print $1 }'); do
  [[ " $REPLY " == *" $command "* ]] ||
    fail "command $command is not completed: '$REPLY'"
done
# Every flag that `tessera trials --help` lists completes.
complete_words tessera trials --
for flag in $("$tessera" trials --help | grep -oE '^  (-o, )?--[a-z0-9-]+' |
              grep -oE -- '--[a-z0-9-]+'); do
  [[ " $REPLY " == *" $flag "* ]] || fail "trials flag $flag is not completed"
done
echo "bash: commands, flags and choices complete"
