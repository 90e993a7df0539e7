"""Loop params are valid JSON Schema fragments whose defaults fit; storage names are configured."""

from __future__ import annotations

import re
from collections.abc import Mapping

from loopengine.contract._schema import compile_schema
from loopengine.contract.checks._walk import Checked, Env, walk

__all__ = ["BUILTIN_STORAGE", "check_params", "check_storage"]

BUILTIN_STORAGE = frozenset({"file", "sqlite"})


_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})
_TEXT = frozenset({"description", "title", "$comment"})
_NUMBERS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
_COUNTS = frozenset({"minLength", "maxLength", "minItems", "maxItems"})


def _plain(fragment: Mapping[str, object]) -> bool:
    """Whether ``fragment`` is made only of the keywords params use most (type, bounds, enum,
    pattern, items…), each with a value of the right kind: then it is a valid schema, known
    without loading jsonschema's meta-schema (a third of ``run``'s start-up)."""
    for key, value in fragment.items():
        if key == "type":
            names = value if isinstance(value, list) else [value]
            ok = bool(names) and all(isinstance(n, str) and n in _TYPES for n in names)
        elif key in _TEXT:
            ok = isinstance(value, str)
        elif key in _NUMBERS:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        elif key in _COUNTS:
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        elif key in ("enum", "examples"):
            ok = isinstance(value, list)
        elif key == "pattern":
            ok = isinstance(value, str) and _compiles(value)
        elif key == "items":
            ok = isinstance(value, dict) and _plain(value)
        else:
            ok = key == "default"
        if not ok:
            return False
    return True


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def check_params(checked: Checked) -> None:
    """Each param is a valid JSON Schema whose default fits; jsonschema loads only for a
    fragment beyond the plain keywords or a default that does not fit (to say why)."""
    params = checked.document.data.get("params")
    if not isinstance(params, dict):
        return
    for name, fragment in params.items():
        if not isinstance(fragment, dict):
            continue
        if not (_plain(fragment) and _default_fits(fragment)):
            _check_with_jsonschema(checked, name, fragment)


def _default_fits(fragment: Mapping[str, object]) -> bool:
    """For a plain fragment: no default, or one the compiled schema accepts."""
    return "default" not in fragment or compile_schema(fragment)(fragment["default"])


def _check_with_jsonschema(checked: Checked, name: str, fragment: Mapping[str, object]) -> None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    path = ("params", name)
    try:
        Draft202012Validator.check_schema(fragment)
    except SchemaError as exc:
        checked.error(path, f"param '{name}' is not a valid JSON Schema: {exc.message}")
        return
    if "default" in fragment:
        for error in Draft202012Validator(fragment).iter_errors(fragment["default"]):
            checked.error((*path, "default"), f"default does not fit the param: {error.message}")


def check_storage(checked: Checked, env: Env) -> None:
    for path, storage in walk(checked.document.data, ("store", "artifacts", "*", "storage")):
        if isinstance(storage, str) and storage not in BUILTIN_STORAGE | env.storage:
            checked.warning(
                path,
                f"storage '{storage}' is not configured: add it under 'storage:' in "
                "loopengine.yaml, or this artifact fails at run time",
            )
