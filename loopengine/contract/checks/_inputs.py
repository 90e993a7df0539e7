"""Loop params are valid JSON Schema fragments whose defaults fit; storage names are configured."""

from __future__ import annotations

from loopengine.contract.checks._walk import Checked, Env, walk

__all__ = ["BUILTIN_STORAGE", "check_params", "check_storage"]

BUILTIN_STORAGE = frozenset({"file", "sqlite"})


def check_params(checked: Checked) -> None:
    """Each param is a valid JSON Schema whose default fits (jsonschema loads only when a loop
    has params)."""
    params = checked.document.data.get("params")
    if not isinstance(params, dict) or not params:
        return
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    for name, fragment in params.items():
        path = ("params", name)
        if not isinstance(fragment, dict):
            continue
        try:
            Draft202012Validator.check_schema(fragment)
        except SchemaError as exc:
            checked.error(path, f"param '{name}' is not a valid JSON Schema: {exc.message}")
            continue
        if "default" in fragment:
            for error in Draft202012Validator(fragment).iter_errors(fragment["default"]):
                checked.error(
                    (*path, "default"), f"default does not fit the param: {error.message}"
                )


def check_storage(checked: Checked, env: Env) -> None:
    for path, storage in walk(checked.document.data, ("store", "artifacts", "*", "storage")):
        if isinstance(storage, str) and storage not in BUILTIN_STORAGE | env.storage:
            checked.warning(
                path,
                f"storage '{storage}' is not configured: add it under 'storage:' in "
                "loopengine.yaml, or this artifact fails at run time",
            )
