"""Edge cases of the core (registration, paths, checkpoints) that once failed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from module_box import Box

from promptimus import ModuleDict, Parameter
from promptimus.errors import (
    CheckpointError,
    CheckpointReferenceError,
    ModuleError,
    UnsafeReference,
)


class Holder(Box):
    def __init__(self) -> None:
        super().__init__()
        self.text = Parameter("default")
        self.items = Parameter([1, 2])


# --- ${pkg:} references may not name a file outside the package ---------------------------------


@pytest.fixture
def package(tmp_path: Path) -> Path:
    root = tmp_path / "pkgroot"
    folder = root / "review_pkg_probe"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "prompt.txt").write_text("in package\n", encoding="utf-8")
    sys.path.insert(0, str(root))
    yield folder
    sys.path.remove(str(root))
    sys.modules.pop("review_pkg_probe", None)


def test_pkg_reference_with_absolute_file_name_is_refused(tmp_path: Path, package: Path) -> None:
    secret = tmp_path / "elsewhere" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("SECRET", encoding="utf-8")
    target = f"review_pkg_probe.{secret.with_suffix('')}.txt"  # joinpath("/abs/secret.txt")
    checkpoint = tmp_path / "ckpt" / "c.toml"
    checkpoint.parent.mkdir()
    checkpoint.write_text(f'text = "${{pkg:{target}}}"\nitems = [1, 2]\n', encoding="utf-8")
    module = Holder()
    with pytest.raises(UnsafeReference, match="path separator"):
        module.load(checkpoint)
    assert module.text.value == "default"


def test_pkg_reference_inside_package_still_loads(tmp_path: Path, package: Path) -> None:
    checkpoint = tmp_path / "c.toml"
    checkpoint.write_text('text = "${pkg:review_pkg_probe.prompt.txt}"\nitems = [3]\n')
    module = Holder().load(checkpoint)
    assert module.text.value == "in package"


# --- a referenced file that is not UTF-8 raises a checkpoint error ------------------------------


def test_non_utf8_file_reference_raises_checkpoint_error(tmp_path: Path) -> None:
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    checkpoint = tmp_path / "c.toml"
    checkpoint.write_text('text = "${file:latin1.txt}"\nitems = [1]\n', encoding="utf-8")
    module = Holder()
    with pytest.raises(CheckpointReferenceError, match="not UTF-8"):
        module.load(checkpoint)
    assert module.text.value == "default"


def test_non_utf8_pkg_reference_raises_checkpoint_error(tmp_path: Path, package: Path) -> None:
    (package / "bad.txt").write_bytes(b"\xff\xfe")
    checkpoint = tmp_path / "c.toml"
    checkpoint.write_text('text = "${pkg:review_pkg_probe.bad.txt}"\nitems = [1]\n')
    with pytest.raises(CheckpointReferenceError, match="not UTF-8"):
        Holder().load(checkpoint)


# --- loaded and exported lists never alias another owner's list ---------------------------------


def test_state_dict_copy_does_not_share_lists_between_modules() -> None:
    source, target = Holder(), Holder()
    target.load_state_dict(source.state_dict())
    source.items.value.append(3)
    assert target.items.value == [1, 2]


def test_load_dict_copies_the_callers_lists() -> None:
    module = Holder()
    checkpoint = {"params": {"text": "t", "items": [[1], 2]}, "submodules": {}}
    module.load_dict(checkpoint)
    checkpoint["params"]["items"][0].append(object())
    assert module.items.value == [[1], 2]
    module.describe()  # still saveable: the foreign object did not get in


def test_state_dict_and_serialize_return_copies() -> None:
    module = Holder()
    module.state_dict()["items"].append(99)
    module.serialize()["params"]["items"].append(77)
    assert module.items.value == [1, 2]


# --- ModuleDict keys set by attribute stay in sync with item access -----------------------------


def test_module_dict_item_replaces_attribute_registered_entry() -> None:
    container = ModuleDict()
    first, second = Box(), Box()
    container.entry = first
    container["entry"] = second
    assert container.entry is second
    assert container["entry"] is second
    del container["entry"]
    assert not hasattr(container, "entry")
    assert first.path == "root" and second.path == "root"


def test_module_dict_item_never_overwrites_internal_state() -> None:
    container = ModuleDict()
    container["_submodules"] = Box()
    assert isinstance(container.__dict__["_submodules"], dict)
    assert list(container) == ["_submodules"]


# --- assigning to a read-only property raises an actionable ModuleError --------------------------


@pytest.mark.parametrize("name", ["llm", "embedder", "vector_store", "reranker"])
def test_assigning_a_provider_property_points_to_with_provider(name: str) -> None:
    module = Box()
    with pytest.raises(ModuleError, match=rf"with_{name}\("):
        setattr(module, name, Box())
    assert name not in module._submodules


def test_assigning_path_raises_module_error() -> None:
    with pytest.raises(ModuleError, match="read-only property"):
        Box().path = Parameter("x")  # type: ignore[assignment, misc]


def test_writable_property_on_subclass_still_works() -> None:
    class WithSetter(Box):
        _stored = 0

        @property
        def level(self) -> int:
            return self._stored

        @level.setter
        def level(self, value: int) -> None:
            self._stored = value

    module = WithSetter()
    module.level = 4
    assert module.level == 4


# --- saving into a missing folder names the checkpoint, not a temporary file --------------------


def test_save_into_missing_folder_raises_checkpoint_error(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "c.toml"
    with pytest.raises(CheckpointError, match="create that folder") as info:
        Holder().save(target)
    assert str(target) in str(info.value)
    assert ".c.toml." not in str(info.value)  # not the temporary file


# --- non-strict load reports missing keys in state-dict order -----------------------------------


def test_missing_keys_follow_state_dict_order() -> None:
    root = Holder()
    root.child = Holder()
    result = root.load_state_dict({"child.text": "x"}, strict=False)
    expected = [key for key in root.state_dict() if key != "child.text"]
    assert result.missing_keys == expected


def test_names_only_the_metaclass_defines_are_free_to_register() -> None:
    # `type.mro` is reachable from the class, never from an instance, so an instance may use it.
    box = Box()
    box.mro = Parameter([1])
    assert box.state_dict() == {"mro": [1]}
    with pytest.raises(ModuleError, match="method of the class"):
        box.forward = Parameter(1)
