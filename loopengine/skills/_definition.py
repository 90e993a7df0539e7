"""``@skill`` and ``@tool``: frozen definitions built from a function's signature.

Decorating attaches the definition to the function; a ``Registry`` collects definitions from
the modules it is given, so importing a module twice or into two registries is harmless.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from loopengine._json import JSONObject
from loopengine._suggestions import hint
from loopengine.contract import ParamProblem
from loopengine.errors import ContractError
from loopengine.skills._docstrings import parse_docstring

__all__ = ["ATTRIBUTE", "Definition", "SkillDef", "ToolDef", "skill", "tool"]

ATTRIBUTE = "__loopengine_definition__"
_BUILTIN_PREFIX = ("loopengine.builtins.", "loopengine.autolearn.")
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True, eq=False)
class Definition:
    """What skills and tools share: a named function and the model of its params.

    The model is built on first use: most registered skills (every built-in one, for a start)
    are never called nor named by the loops a command loads, and a model costs ~1.5 ms to build.
    """

    name: str
    fn: Callable[..., Any]
    build_params: Callable[[], type[BaseModel]] = field(repr=False)
    is_async: bool
    description: str
    origin: str
    _built: dict[str, type[BaseModel]] = field(default_factory=dict, repr=False)

    @property
    def params(self) -> type[BaseModel]:
        """The pydantic model of the function's params (from its signature and docstring)."""
        model = self._built.get("params")
        if model is None:
            model = self._built["params"] = self.build_params()
        return model


@dataclass(frozen=True, slots=True, eq=False)
class SkillDef(Definition):
    """A registered skill: ``fn(ctx, **params)`` or ``fn(ctx, model)`` with validated params."""

    takes_model: bool = False

    @property
    def builtin(self) -> bool:
        return self.origin.startswith(_BUILTIN_PREFIX)

    @property
    def param_names(self) -> frozenset[str]:
        return frozenset(info.alias or name for name, info in self.params.model_fields.items())

    @property
    def accepts_any_param(self) -> bool:
        return self.params.model_config.get("extra") == "allow"

    def check_params(
        self, params: Mapping[str, Any], dynamic: frozenset[str]
    ) -> list[ParamProblem]:
        """Problems of ``params`` known at load; keys in ``dynamic`` are only checked to exist."""
        try:
            self.params.model_validate(dict(params))
        except ValidationError as exc:
            return [
                _param_problem(self, error)
                for error in exc.errors()
                if not (
                    error["loc"]
                    and error["loc"][0] in dynamic
                    and error["type"] != "extra_forbidden"
                )
            ]
        return []


def _param_problem(definition: SkillDef, error: Any) -> ParamProblem:
    loc = tuple(error["loc"])
    if error["type"] == "extra_forbidden":
        suggestion = hint(str(loc[0]), definition.param_names) or "it takes no params"
        return ParamProblem(loc, f"skill '{definition.name}' has no param '{loc[0]}'; {suggestion}")
    if error["type"] == "missing":
        return ParamProblem(loc, f"skill '{definition.name}' needs param '{loc[0]}'")
    return ParamProblem(loc, f"param of skill '{definition.name}': {error['msg']}")


@dataclass(frozen=True, slots=True, eq=False)
class ToolDef(Definition):
    """A function offered to LLMs, with the JSON Schema of its arguments."""

    def json_schema(self) -> JSONObject:
        """OpenAI ``function.parameters`` of this tool."""
        schema = self.params.model_json_schema()
        schema.pop("title", None)
        return schema


def _origin(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return inspect.get_annotations(fn, eval_str=True)
    except Exception as exc:
        raise ContractError(
            f"{_origin(fn)}: cannot resolve the type hints ({type(exc).__name__}: {exc}); "
            "define the types at module level"
        ) from exc


def _model_builder(
    fn: Callable[..., Any], parameters: list[inspect.Parameter], name: str, docs: dict[str, str]
) -> Callable[[], type[BaseModel]]:
    """Check the signature now; return what builds its params model later."""
    hints = _hints(fn)
    for parameter in parameters:
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.POSITIONAL_ONLY):
            raise ContractError(f"{_origin(fn)}: params of '{name}' must be keyword-compatible")

    def build() -> type[BaseModel]:
        fields: dict[str, Any] = {}
        extra: Literal["allow", "forbid"] = "forbid"
        for parameter in parameters:
            if parameter.kind is inspect.Parameter.VAR_KEYWORD:
                extra = "allow"
                continue
            annotation = hints.get(parameter.name, Any)
            default = ... if parameter.default is inspect.Parameter.empty else parameter.default
            described = Field(default, description=docs.get(parameter.name))
            fields[parameter.name] = (annotation, described)
        config = ConfigDict(extra=extra, arbitrary_types_allowed=True)
        with warnings.catch_warnings():
            # A param may be named as pydantic's deprecated methods are (``schema``, ``json``):
            # the model's attribute is then the param's value, which is all a call reads.
            warnings.filterwarnings("ignore", "Field name .* shadows an attribute", UserWarning)
            return create_model(f"{name}_params", __config__=config, **fields)

    return build


def _given(model: type[BaseModel]) -> Callable[[], type[BaseModel]]:
    return lambda: model


def _built(
    fn: Callable[..., Any], name: str, build: Callable[[], type[BaseModel]]
) -> type[BaseModel]:
    """A plugin's params model, built now so that a signature pydantic refuses is reported when
    the plugin loads (the built-in skills' models wait for their first use)."""
    try:
        return build()
    except Exception as exc:
        raise ContractError(
            f"{_origin(fn)}: the params of '{name}' cannot be checked: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0]}"
        ) from exc


def _single_model(
    fn: Callable[..., Any], parameters: list[inspect.Parameter]
) -> type[BaseModel] | None:
    if len(parameters) != 1:
        return None
    annotation = _hints(fn).get(parameters[0].name)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _make_skill(fn: Callable[..., Any], name: str | None, description: str | None) -> SkillDef:
    parameters = list(inspect.signature(fn).parameters.values())
    if not parameters:
        raise ContractError(f"{_origin(fn)}: a skill takes the SkillContext as first argument")
    model = _single_model(fn, parameters[1:])
    return SkillDef(
        **_common(fn, parameters[1:], name, description, model), takes_model=model is not None
    )


def _make_tool(fn: Callable[..., Any], name: str | None, description: str | None) -> ToolDef:
    parameters = list(inspect.signature(fn).parameters.values())
    return ToolDef(**_common(fn, parameters, name, description, _single_model(fn, parameters)))


def _common(
    fn: Callable[..., Any],
    parameters: list[inspect.Parameter],
    name: str | None,
    description: str | None,
    model: type[BaseModel] | None,
) -> dict[str, Any]:
    summary, docs = parse_docstring(fn.__doc__)
    final_name = str(name) if name else fn.__name__
    build = _given(model) if model else _model_builder(fn, parameters, final_name, docs)
    if not _origin(fn).startswith(_BUILTIN_PREFIX):
        build = _given(_built(fn, final_name, build))
    return {
        "name": final_name,
        "fn": fn,
        "build_params": build,
        "is_async": inspect.iscoroutinefunction(fn),
        "description": description or summary,
        "origin": _origin(fn),
    }


def _decorator(
    make: Callable[[Callable[..., Any], str | None, str | None], Definition],
    name: Any,
    description: str | None,
) -> Any:
    if callable(name):
        setattr(name, ATTRIBUTE, make(name, None, description))
        return name

    def decorate(fn: F) -> F:
        setattr(fn, ATTRIBUTE, make(fn, name, description))
        return fn

    return decorate


@overload
def skill(name: F, /) -> F: ...
@overload
def skill(name: str | None = None, /, *, description: str | None = None) -> Callable[[F], F]: ...
def skill(
    name: str | F | None = None, /, *, description: str | None = None
) -> F | Callable[[F], F]:
    """Declare a skill: ``@skill``, ``@skill("name")`` or ``@skill(name, description=...)``."""
    return _decorator(_make_skill, name, description)  # type: ignore[no-any-return]


@overload
def tool(name: F, /) -> F: ...
@overload
def tool(name: str | None = None, /, *, description: str | None = None) -> Callable[[F], F]: ...
def tool(name: str | F | None = None, /, *, description: str | None = None) -> F | Callable[[F], F]:
    """Offer a function to LLMs: ``@tool`` or ``@tool("name", description=...)``."""
    return _decorator(_make_tool, name, description)  # type: ignore[no-any-return]
