#!/usr/bin/env python3
"""The option names each framework accepts, read from its source at a commit.

Writes tests/data/framework_options.json, what layout_export_test's
FrameworkOptionNamesTest checks every exported name against (the
frameworks cannot run here: torchtitan and Megatron need a newer torch,
DeepSpeed is not installed). Reads the sources with Python's ast, running
nothing of them:

  megatron    NVIDIA/Megatron-LM: every '--flag' literal of
              megatron/training/arguments.py, and the flags
              ArgumentGroupFactory makes from the dataclasses it is given
              there (megatron/training/argument_utils.py: '--' + field with
              '_' -> '-', '--no-'/'--disable-' for a bool that defaults to
              True, or the field's argparse_meta arg_names)
  torchtitan  pytorch/torchtitan: Trainer.Config's fields
              (torchtitan/trainer.py) and, per field whose type is a config
              class, that class's fields ("parallelism" ->
              ParallelismConfig's)
  deepspeed   deepspeedai/DeepSpeed: the string constants of
              deepspeed/runtime/constants.py and of the configs of ZeRO,
              precision and activation checkpointing, and the field names of
              their pydantic models
  nemo        NVIDIA-NeMo/Megatron-Bridge: ConfigContainer's fields
              (src/megatron/bridge/training/config.py) and, per field, the
              fields of its classes (found in Megatron-Bridge or
              Megatron-LM, with their bases, through import aliases);
              CommOverlapConfig's fields

  extract_framework_options.py MEGATRON_LM TORCHTITAN DEEPSPEED BRIDGE OUT

Each argument is a git directory (the tool's mirror) at the commit the
exporters cite; the commit is read from it and written beside the names.
"""
import ast
import json
import subprocess
import sys


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True,
                          capture_output=True, text=True).stdout


def source(repo, path):
    return git(repo, "show", f"HEAD:{path}")


def files(repo, prefix):
    return [p for p in git(repo, "ls-tree", "-r", "--name-only", "HEAD",
                           prefix).split("\n") if p.endswith(".py")]


class Classes:
    """Every class of some Python files, by name: its fields and bases."""

    def __init__(self):
        self.by_name = {}
        self.aliases = {}  # "from m import A as B": B -> A

    def add_source(self, text):
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if a.asname and a.asname != a.name:
                        self.aliases[a.asname] = a.name
            if isinstance(node, ast.ClassDef):
                fields = {}
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(
                            item.target, ast.Name):
                        fields[item.target.id] = item
                bases = [b.id if isinstance(b, ast.Name) else
                         b.attr if isinstance(b, ast.Attribute) else None
                         for b in node.bases]
                self.by_name.setdefault(node.name, []).append(
                    (fields, [b for b in bases if b]))

    def fields(self, name, seen=None):
        """{field: AnnAssign} of `name` and its bases (all definitions)."""
        seen = seen or set()
        name = self.aliases.get(name, name) if name not in self.by_name \
            else name
        if name in seen or name not in self.by_name:
            return {}
        seen.add(name)
        out = {}
        for fields, bases in self.by_name[name]:
            for base in bases:
                out.update(self.fields(base, seen))
            out.update(fields)
        return out


def annotation_names(node):
    """The class names an annotation mentions (X, X | Y, Optional[X])."""
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)] + [
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)]


def megatron(repo):
    classes = Classes()
    for path in files(repo, "megatron"):
        classes.add_source(source(repo, path))
    text = source(repo, "megatron/training/arguments.py")
    flags = set()
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.startswith("--"):
            flags.add(node.value)
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == \
                "ArgumentGroupFactory" and node.args:
            cls = node.args[0]
            name = cls.id if isinstance(cls, ast.Name) else cls.attr
            exclude = set()
            for kw in node.keywords:
                if kw.arg == "exclude" and isinstance(kw.value, ast.List):
                    exclude = {e.value for e in kw.value.elts
                               if isinstance(e, ast.Constant)}
            for field, item in classes.fields(name).items():
                if field in exclude or field.startswith("_"):
                    continue
                dashed = field.replace("_", "-")
                flags.update({"--" + dashed, "--no-" + dashed,
                              "--disable-" + dashed})
                # argparse_meta's own names.
                for sub in ast.walk(item):
                    if isinstance(sub, ast.Dict):
                        for k, v in zip(sub.keys, sub.values):
                            if isinstance(k, ast.Constant) and \
                                    k.value == "arg_names" and \
                                    isinstance(v, ast.List):
                                flags.update(e.value for e in v.elts
                                             if isinstance(e, ast.Constant))
    return {"flags": sorted(flags)}


def config_tree(classes, root_fields):
    """{"": root fields, field: fields of its classes} for a config root."""
    out = {"": sorted(root_fields)}
    for field, item in root_fields.items():
        names = set()
        for cls in annotation_names(item.annotation):
            names.update(classes.fields(cls))
        if names:
            out[field] = sorted(names)
    return out


def torchtitan(repo):
    classes = Classes()
    for path in files(repo, "torchtitan"):
        classes.add_source(source(repo, path))
    # Trainer.Config: the nested class Config of Trainer.
    trainer = ast.parse(source(repo, "torchtitan/trainer.py"))
    root = {}
    for node in ast.walk(trainer):
        if isinstance(node, ast.ClassDef) and node.name == "Trainer":
            for item in node.body:
                if isinstance(item, ast.ClassDef) and item.name == "Config":
                    for f in item.body:
                        if isinstance(f, ast.AnnAssign) and isinstance(
                                f.target, ast.Name):
                            root[f.target.id] = f
    return {"config": config_tree(classes, root)}


def deepspeed(repo):
    keys = set()
    classes = Classes()
    for path in ["deepspeed/runtime/constants.py",
                 "deepspeed/runtime/zero/config.py",
                 "deepspeed/runtime/precision_config.py",
                 "deepspeed/runtime/activation_checkpointing/config.py"]:
        text = source(repo, path)
        classes.add_source(text)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Assign) and isinstance(
                    node.value, ast.Constant) and isinstance(
                    node.value.value, str):
                keys.add(node.value.value)
    for fields, _ in sum(classes.by_name.values(), []):
        keys.update(fields)
    return {"keys": sorted(keys)}


def nemo(bridge, megatron_repo):
    classes = Classes()
    for path in files(bridge, "src/megatron/bridge"):
        classes.add_source(source(bridge, path))
    for folder in ("megatron/core", "megatron/training"):
        for path in files(megatron_repo, folder):
            classes.add_source(source(megatron_repo, path))
    root = classes.fields("ConfigContainer")
    tree = config_tree(classes, root)
    tree["CommOverlapConfig()"] = sorted(classes.fields("CommOverlapConfig"))
    return {"cfg": tree}


def commit(repo):
    return git(repo, "log", "-1", "--format=%h %cs").strip()


def main():
    megatron_repo, titan, ds, bridge, out = sys.argv[1:6]
    result = {
        "megatron": {"source": "NVIDIA/Megatron-LM " + commit(megatron_repo),
                     **megatron(megatron_repo)},
        "torchtitan": {"source": "pytorch/torchtitan " + commit(titan),
                       **torchtitan(titan)},
        "deepspeed": {"source": "deepspeedai/DeepSpeed " + commit(ds),
                      **deepspeed(ds)},
        "nemo": {"source": "NVIDIA-NeMo/Megatron-Bridge " + commit(bridge) +
                           " over Megatron-LM " + commit(megatron_repo),
                 **nemo(bridge, megatron_repo)},
    }
    with open(out, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
