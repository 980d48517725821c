"""What a merge took from each parent.

`promptimus diff A.toml MERGED.toml B.toml` names, for every parameter the parents disagree
on, the parent the merged checkpoint took it from (with the unified diff of a text against
the value it left), and shows in full what comes from neither. Exit 0 when every parameter
comes from a parent, 1 when some does not.

`promptimus diff --merges RUN_DIR` lists the merges of a training run (the folder `fit`
wrote `history.jsonl` in): the parents, their common ancestor, each parameter taken and from
whom (with its diff against the other parent's value), and whether validation kept it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

from ..board.merge_origin import merge_origins
from ..board.parameter_diff import flat_parameters, one_line, parameter_changes
from ..board.training_page import HISTORY, candidate_values, read_history
from .checkpoint_view import load_module_dict
from .command_error import CommandLineError
from .style import Style

__all__ = ["diff_merged", "diff_run_merges"]


def _change_lines(key: str, old: Any, new: Any, old_label: str, new_label: str) -> list[str]:
    changes = parameter_changes({key: old}, {key: new}, old_label, new_label)
    if changes and changes[0].lines:
        return list(changes[0].lines)
    return [f"{old_label}: {one_line(old)}", f"{new_label}: {one_line(new)}"]


def _indent(style: Style, lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        colour = {"+": "green", "-": "red", "@": "cyan"}.get(line[:1], "")
        out.append("      " + (style(line, colour) if colour else line))
    return out


def diff_merged(path_a: str, path_merged: str, path_b: str, stdout: TextIO) -> int:
    first = flat_parameters(load_module_dict(path_a))
    merged = flat_parameters(load_module_dict(path_merged))
    second = flat_parameters(load_module_dict(path_b))
    style = Style(stdout)
    labels = {"first": path_a, "second": path_b}
    out: list[str] = []
    strange = False
    for origin in merge_origins(first, merged, second):
        key = origin.key
        if origin.source in labels:
            source = labels[origin.source]
            left = path_b if origin.source == "first" else path_a
            out.append(style(f"< from {source}: {key}", "green"))
            out += _indent(style, _change_lines(key, origin.other, origin.value, left, source))
            continue
        strange = True
        if origin.source == "neither":
            out.append(style(f"! from neither parent: {key} = {one_line(origin.value)}", "red"))
        elif origin.source == "added":
            out.append(style(f"! in no parent: {key} = {one_line(origin.value)}", "red"))
        else:
            out.append(style(f"! dropped: {key} (a parent holds {one_line(origin.other)})", "red"))
    if not out:
        stdout.write(f"{path_a} and {path_b} hold the same parameters as {path_merged}.\n")
        return 0
    head = f"{path_merged} against its parents {path_a} and {path_b}:"
    stdout.write("\n".join([head, *out]) + "\n")
    return 1 if strange else 0


def _history_folder(path: str) -> Path:
    folder = Path(path)
    if folder.is_file() and folder.name == HISTORY:
        folder = folder.parent
    if not (folder / HISTORY).is_file():
        raise CommandLineError(
            f"{path} holds no {HISTORY}; give the checkpoint_dir of a fit (the folder "
            f"holding best.toml and {HISTORY})."
        )
    return folder


def diff_run_merges(path: str, stdout: TextIO) -> int:
    folder = _history_folder(path)
    entries, problems = read_history(folder)
    values = candidate_values(entries)
    style = Style(stdout)
    out: list[str] = [f"{folder / HISTORY}: {problem}" for problem in problems]
    merges = [e for e in entries if isinstance(e.get("merge"), dict)]
    for entry in merges:
        merge = entry["merge"]
        parents = merge.get("parents") or []
        took = merge.get("took") or {}
        if len(parents) != 2 or not isinstance(took, dict):
            out.append(f"candidate {entry.get('candidate')}: a merge entry without its parents")
            continue
        kept = "kept" if entry.get("accepted") else "reverted"
        score = entry.get("val_score")
        scored = f", validation {score:.3f}" if isinstance(score, int | float) else ""
        out.append(
            style(
                f"candidate {entry.get('candidate')} merges {parents[0]} and {parents[1]} "
                f"(common ancestor {merge.get('ancestor')}): {kept}{scored}",
                "yellow",
            )
        )
        for key, source in took.items():
            other = parents[1] if source == parents[0] else parents[0]
            out.append(f"  {key} from candidate {source}")
            new = values.get(source, {}).get(key) if isinstance(source, int) else None
            old = values.get(other, {}).get(key) if isinstance(other, int) else None
            out += _indent(
                style, _change_lines(key, old, new, f"candidate {other}", f"candidate {source}")
            )
    if not merges:
        out.append(f"No merge in {folder / HISTORY} (fit merges with Reflective(merge=True)).")
    stdout.write("\n".join(out) + "\n")
    return 0
