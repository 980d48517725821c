"""Hostile checkpoints: references to FIFOs, devices, huge and exponentially nested files, and
trees or values nested deep enough to exhaust Python's recursion limit all end in a named error,
quickly and without hanging (every wait here is bounded, so a regression fails, never hangs)."""

from __future__ import annotations

import contextlib
import copy
import os
import pickle
from pathlib import Path
from typing import Any

import pytest
from bounded_call import bounded
from module_box import Box

import promptimus as pm
from promptimus.checkpoint import files as checkpoint_files
from promptimus.core import (
    DEFAULT_MAX_EXPANDED_CHARS,
    DEFAULT_MAX_FILE_BYTES,
    MAX_MODULE_DEPTH,
    MAX_VALUE_DEPTH,
    ModuleDict,
    ModuleList,
    Parameter,
    module_dict_from_toml_str,
    module_dict_to_toml_str,
)
from promptimus.errors import (
    CheckpointMismatch,
    CheckpointReferenceError,
    CheckpointTooDeep,
    CheckpointWriteError,
    FileRefused,
    FileTooLarge,
    InvalidParameterValue,
    ModuleError,
    ModuleTooDeep,
    NotARegularFile,
    ReferenceTooLarge,
)


def reference_tree() -> Box:
    root = Box()
    root.text = Parameter("default")
    return root


# ------------------------------------------------------------------------ non-regular references


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_reference_to_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    (tmp_path / "c.toml").write_text('text = """\n${file:pipe.txt}\n"""\n')
    root = reference_tree()

    def unblock() -> None:  # a writer opening the FIFO lets a blocked reader see EOF
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    with pytest.raises(CheckpointReferenceError, match="FIFO"):
        bounded(lambda: root.load(tmp_path / "c.toml"), on_timeout=unblock)
    assert root.text.value == "default"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_checkpoint_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "c.toml"
    os.mkfifo(fifo)
    with pytest.raises(pm.errors.CheckpointError, match="FIFO"):
        bounded(lambda: reference_tree().load(fifo))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_saving_onto_a_fifo_is_a_named_error_not_a_hang(tmp_path: Path) -> None:
    target = tmp_path / "c.toml"
    os.mkfifo(target)

    def unblock() -> None:
        with contextlib.suppress(OSError):
            os.close(os.open(target, os.O_WRONLY | os.O_NONBLOCK))

    with pytest.raises(CheckpointWriteError, match="FIFO"):
        bounded(lambda: reference_tree().save(target), on_timeout=unblock)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.toml"]


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_reference_to_a_device_is_refused_even_when_its_folder_is_allowed(tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text('text = """\n${file:/dev/zero}\n"""\n')
    root = reference_tree()
    with pytest.raises(CheckpointReferenceError, match="device"):
        bounded(lambda: root.load(tmp_path / "c.toml", allow_paths=["/dev"]))
    assert root.text.value == "default"


def test_reference_to_a_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "c.toml").write_text('text = """\n${file:sub}\n"""\n')
    with pytest.raises(CheckpointReferenceError, match="folder"):
        reference_tree().load(tmp_path / "c.toml")


def test_referenced_file_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    assert DEFAULT_MAX_FILE_BYTES >= 1024 * 1024  # a sane default: prompts fit easily
    (tmp_path / "big.txt").write_text("x" * 2000)
    (tmp_path / "c.toml").write_text('text = """\n${file:big.txt}\n"""\n')
    root = reference_tree()
    with pytest.raises(ReferenceTooLarge, match=r"2000 bytes.*max_file_bytes"):
        root.load(tmp_path / "c.toml", max_file_bytes=1000)
    assert root.text.value == "default"
    root.load(tmp_path / "c.toml", max_file_bytes=2000)
    assert root.text.value == "x" * 2000


def test_checkpoint_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    root = reference_tree()
    root.text.value = "y" * 5000
    root.save(tmp_path / "c.toml")
    with pytest.raises(ReferenceTooLarge, match="max_file_bytes"):
        reference_tree().load(tmp_path / "c.toml", max_file_bytes=4000)


def test_files_that_may_not_be_read_are_told_apart_by_type(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_bytes(b"x" * 10)
    with pytest.raises(FileTooLarge, match="10 bytes, more than the limit of 5 bytes") as large:
        checkpoint_files.read_regular_file(tmp_path / "big.txt", 5)
    with pytest.raises(NotARegularFile, match="a folder") as folder:
        checkpoint_files.read_regular_file(tmp_path, 5)
    for refused in (large.value, folder.value):
        assert isinstance(refused, FileRefused) and isinstance(refused, pm.PromptimusError)
    assert not isinstance(folder.value, FileTooLarge)
    assert checkpoint_files.read_regular_file(tmp_path / "big.txt", 10) == b"x" * 10


# ---------------------------------------------------------------------------- nested references


def fan_out(folder: Path, levels: int, width: int = 8) -> Path:
    """`f0.toml` references `f1.toml` `width` times, ..., down to `f{levels}.toml`, which holds
    one short text: `width ** levels` leaves from `levels + 1` small files."""
    (folder / f"f{levels}.toml").write_text(
        'text = """\nleaf text of about forty characters\n"""\n'
    )
    for level in range(levels):
        lines = [f'k{i} = """\n${{file:f{level + 1}.toml}}\n"""' for i in range(width)]
        (folder / f"f{level}.toml").write_text("\n".join(lines) + "\n")
    main = folder / "main.toml"
    main.write_text('tree = """\n${file:f0.toml}\n"""\n')
    return main


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    reads: list[Path] = []
    real = checkpoint_files.read_regular_file

    def counting(path: Path, limit: int | None = DEFAULT_MAX_FILE_BYTES) -> bytes:
        reads.append(Path(path))
        return real(path, limit)

    monkeypatch.setattr(checkpoint_files, "read_regular_file", counting)
    return reads


def test_a_file_referenced_many_times_is_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    main = fan_out(tmp_path, levels=4)  # 8**4 = 4096 leaves, five files
    reads = count_reads(monkeypatch)
    data = bounded(lambda: module_dict_from_toml_str(main.read_text(), base_path=tmp_path))
    assert sorted(p.name for p in reads) == [f"f{i}.toml" for i in range(5)]
    node = data["submodules"]["tree"]
    for _ in range(3):
        assert sorted(node["submodules"]) == [f"k{i}" for i in range(8)]
        node = node["submodules"]["k7"]
    leaf = node["submodules"]["k0"]
    assert leaf == {"params": {"text": "leaf text of about forty characters"}, "submodules": {}}


def test_exponential_expansion_is_refused_by_the_default_limit(tmp_path: Path) -> None:
    # the case: small files, each referencing the next eight times, eleven levels deep
    main = fan_out(tmp_path, levels=11)
    with pytest.raises(ReferenceTooLarge, match="max_expanded_chars"):
        bounded(lambda: reference_tree().load(main, strict=False))


def test_expansion_limit_is_configurable(tmp_path: Path) -> None:
    assert DEFAULT_MAX_EXPANDED_CHARS >= 1024 * 1024
    main = fan_out(tmp_path, levels=3)  # 512 leaves of ~45 characters: about 25,000
    text = main.read_text()
    with pytest.raises(ReferenceTooLarge):
        module_dict_from_toml_str(text, base_path=tmp_path, max_expanded_chars=10_000)
    data = module_dict_from_toml_str(text, base_path=tmp_path, max_expanded_chars=100_000)
    assert len(data["submodules"]["tree"]["submodules"]) == 8


def test_reference_cycles_are_still_refused(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text('b = """\n${file:b.toml}\n"""\n')
    (tmp_path / "b.toml").write_text('a = """\n${file:a.toml}\n"""\n')
    with pytest.raises(CheckpointReferenceError, match="cycle"):
        module_dict_from_toml_str('a = """\n${file:a.toml}\n"""\n', base_path=tmp_path)


def test_references_cannot_stack_tables_past_the_depth_limit(tmp_path: Path) -> None:
    # each file is shallow; the tree they build by referencing each other is not
    chain = 30
    for i in range(chain):
        nested = ".".join(["t"] * 4)
        (tmp_path / f"d{i}.toml").write_text(
            f'[{nested}]\nnext = """\n${{file:d{i + 1}.toml}}\n"""\n'
        )
    (tmp_path / f"d{chain}.toml").write_text("x = 1\n")
    with pytest.raises(CheckpointTooDeep, match="MAX_MODULE_DEPTH"):
        bounded(lambda: module_dict_from_toml_str('r = """\n${file:d0.toml}\n"""\n', tmp_path))


# ------------------------------------------------------------------------- depth of trees/values


def chain_of(depth: int) -> tuple[Box, Box]:
    root = node = Box()
    for _ in range(depth):
        child = Box()
        child.p = Parameter([["v"]])
        node.c = child
        node = child
    return root, node


def test_a_tree_at_the_depth_limit_works_everywhere(tmp_path: Path) -> None:
    root, leaf = chain_of(MAX_MODULE_DEPTH)
    path = tmp_path / "deep.toml"
    root.save(path)
    root.save(path)  # in place, over the existing file
    twin = copy.deepcopy(root)
    twin.load(path)
    assert twin.digest() == root.digest()
    assert len(list(root.named_modules())) == MAX_MODULE_DEPTH + 1
    assert len(root.state_dict()) == MAX_MODULE_DEPTH
    assert repr(root).count("Box(") == MAX_MODULE_DEPTH + 1
    assert leaf.path == "root" + ".c" * MAX_MODULE_DEPTH
    assert module_dict_from_toml_str(root.describe()) == root.serialize()
    assert pickle.loads(pickle.dumps(root)).digest() == root.digest()


def test_a_tree_deeper_than_the_limit_is_refused_at_registration() -> None:
    root, leaf = chain_of(MAX_MODULE_DEPTH)
    with pytest.raises(ModuleTooDeep, match="MAX_MODULE_DEPTH"):
        leaf.c = Box()
    assert "c" not in leaf._submodules
    # the height of the subtree counts too: a deep tree hung under a shallow parent
    top, mid = chain_of(MAX_MODULE_DEPTH // 2)  # parents are weak references: keep `top`
    other, _ = chain_of(MAX_MODULE_DEPTH // 2 + 1)
    with pytest.raises(ModuleTooDeep):
        mid.more = other
    mid.fits = chain_of(MAX_MODULE_DEPTH // 2 - 1)[0]
    assert len(list(top.named_modules())) == MAX_MODULE_DEPTH + 1
    with pytest.raises(ModuleTooDeep):
        ModuleDict({"x": root})  # via a container: 1 + the root's 100 levels
    listed = ModuleList([Box(), Box()])
    with pytest.raises(ModuleTooDeep):
        listed.insert(0, root)  # refused before the list is rebuilt: nothing half applied
    assert len(listed) == 2 and all(len(m._submodules) == 0 for m in listed)
    assert len(list(root.named_modules())) == MAX_MODULE_DEPTH + 1


def test_thousand_level_tables_and_arrays_in_a_checkpoint_are_refused() -> None:
    tables = "\n".join("[" + ".".join(["a"] * n) + "]" for n in (1, 500, 1000))
    arrays = "x = " + "[" * 1000 + "]" * 1000
    deep_enough = "x = " + "[" * (MAX_VALUE_DEPTH + 1) + "]" * (MAX_VALUE_DEPTH + 1)
    for text in (tables, arrays, deep_enough):
        with pytest.raises(CheckpointTooDeep):
            module_dict_from_toml_str(text)


def test_saving_over_a_file_nested_thousands_deep_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[" + ".".join(["a"] * 1000) + "]\n")
    with pytest.raises(pm.errors.CheckpointSyntaxError, match="keep_comments=False"):
        reference_tree().save(path)
    reference_tree().save(path, keep_comments=False)
    assert reference_tree().load(path).text.value == "default"


def test_a_looping_module_dict_is_refused_by_the_writer() -> None:
    data: dict[str, Any] = {"params": {}, "submodules": {}}
    data["submodules"]["again"] = data
    with pytest.raises(CheckpointTooDeep):
        module_dict_to_toml_str(data)


def test_values_nested_past_the_limit_are_refused_at_assignment() -> None:
    ok: Any = "leaf"
    for _ in range(MAX_VALUE_DEPTH):
        ok = [ok]
    assert Parameter(ok).value == ok
    with pytest.raises(InvalidParameterValue, match="MAX_VALUE_DEPTH"):
        Parameter([ok])
    deep: Any = []
    for _ in range(5000):  # used to end in RecursionError
        deep = [deep]
    param = Parameter("kept")
    with pytest.raises(InvalidParameterValue):
        param.value = deep
    assert param.value == "kept"


# ----------------------------------------------------------------------------- 64-bit integers


def test_checkpoint_integer_outside_64_bits_is_refused_at_load(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("n = 9223372036854775808\n")
    root = Box()
    root.n = Parameter(1)
    with pytest.raises(CheckpointMismatch, match=r"root\.n.*64-bit"):
        root.load(path)
    assert root.n.value == 1
    path.write_text("n = -9223372036854775808\n")
    assert root.load(path).n.value == -(2**63)


# ------------------------------------------------------------------------------- names in keys


def test_module_dict_key_with_a_lone_surrogate_is_refused() -> None:
    box = ModuleDict()
    with pytest.raises(ModuleError, match="surrogate"):
        box["bad\ud800"] = Box()
    assert len(box) == 0
    root = Box()
    with pytest.raises(ModuleError, match="surrogate"):
        setattr(root, "p\udcff", Parameter("x"))
    assert root.state_dict() == {}
