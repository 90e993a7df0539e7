"""What phases use besides the run: registry, store, config, clock, and the skill call path."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from loopengine.contract import Config
from loopengine.engine._logs import StepLogger
from loopengine.engine._middleware import Handler, SkillCall, build_stack, spent
from loopengine.engine._run import Run
from loopengine.errors import SkillError
from loopengine.expr import Template, compile_template
from loopengine.skills import Progress, Registry, SkillContext, SkillDef, SkillOutput
from loopengine.store import ArtifactWriter, Store

if TYPE_CHECKING:
    from loopengine.builtins import LLMRuntime

__all__ = ["NO_PARAMS", "Services"]

_LOGGER = logging.getLogger("loopengine.skills")
NO_PARAMS = compile_template({})
"""Params of skills the engine calls without any (context loaders, built-in actions)."""


@lru_cache(maxsize=1024)
def _path(file: str) -> Path:
    """A loop file's path, made once (a skill call each needs it)."""
    return Path(file)


def _spend(run: Run, tokens: int, calls: int) -> str | None:
    run.usage.tokens += tokens
    run.usage.llm_calls += calls
    return spent(run)


@dataclass(slots=True)
class Services:
    """Shared by every execution of an engine."""

    registry: Registry
    store: Store
    config: Config = field(default_factory=Config)
    base: Path = field(default_factory=Path.cwd)
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    clock: Callable[[], float] = time.time
    retry_base_s: float = 0.2
    progress: Progress | None = None
    """Told what long skills are doing (``SkillContext.progress``)."""
    private: tuple[Path, ...] = ()
    """What the LLM tools never see (``Settings.private``: the config, the store)."""
    stacks: dict[tuple[bool, bool], Handler] = field(init=False)
    artifacts: ArtifactWriter = field(init=False)
    _llm: LLMRuntime | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.stacks = {
            (budget, retry): build_stack(self.retry_base_s, budget=budget, retry=retry)
            for budget in (False, True)
            for retry in (False, True)
        }
        self.artifacts = ArtifactWriter(self.config.storage, self.base)

    def llm(self) -> LLMRuntime | None:
        """The LLM runtime, built on first use when the config has cluster nodes (the HTTP client
        is imported only then)."""
        if self._llm is None and self.config.cluster.nodes:
            from loopengine.builtins import LLMRuntime

            self._llm = LLMRuntime(
                self.config, self.base, self.registry, self.store, self.environ, self.private
            )
        return self._llm

    async def aclose(self) -> None:
        """Release the LLM clients and artifact connections."""
        self.artifacts.close()
        if self._llm is not None:
            await self._llm.aclose()
            self._llm = None

    def rendered(self, run: Run, template: Template, extra: Any) -> Any:
        """``template`` rendered against the context plus ``extra`` (a call's item or batch)."""
        if extra:
            run.data.update(extra)
        try:
            return template.render(run.data, self.environ)
        finally:
            for key in extra or ():
                run.data.pop(key, None)

    def _params(
        self, run: Run, definition: SkillDef, template: Template, extra: Any
    ) -> dict[str, Any]:
        if template.is_static and not extra:
            cached = template.prepared.get(definition.name)
            if cached is None:
                cached = template.prepared[definition.name] = self._validated(
                    definition, template.source
                )
            return dict(cached)
        return self._validated(definition, self.rendered(run, template, extra))

    @staticmethod
    def _validated(definition: SkillDef, params: Any) -> dict[str, Any]:
        """``params`` as the skill takes them; one line saying which param its model refuses
        and why (a skill that takes one model is handed the params its model accepted)."""
        try:
            model = definition.params.model_validate(params or {})
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"])
            message = problem["msg"]
            if problem.get("input", ...) is None:
                message = f"null, nothing given; {message}"
            said = f"{where}: {message}" if where else message
            raise SkillError(f"params of skill '{definition.name}': {said}") from None
        if definition.takes_model:
            return dict(params or {})
        values = {name: getattr(model, name) for name in type(model).model_fields}
        values.update(model.model_extra or {})
        return values

    async def call(
        self,
        run: Run,
        phase: str,
        step: str,
        skill: str,
        template: Template,
        *,
        extra: dict[str, Any] | None = None,
        dry_run: bool = False,
        max_retries: int = 0,
        key: str | None = None,
        keep_result: bool = False,
    ) -> SkillOutput:
        """Call ``skill`` with ``template`` rendered against the context (plus ``extra``);
        ``keep_result``: the call's record keeps what it returned (an action's call)."""
        definition = self.registry.skill(skill)
        params = self._params(run, definition, template, extra)
        if dry_run:
            params["dry_run"] = True
        ctx = SkillContext(
            execution_id=run.execution_id,
            loop_id=run.loop.id,
            phase=phase,
            step=step,
            idempotency_key=key or f"{run.execution_id}:{phase}:{step}",
            data=run.data,
            dry_run=dry_run or run.dry_run,
            logger=StepLogger(_LOGGER, run.log, phase, step),
            llm_runtime=self.llm,
            spend=partial(_spend, run),
            progress=self.progress,
            store=self.store,
            config=self.config,
            base=self.base,
            loop_file=_path(run.loop.file),
            private=self.private,
            scope=run.envelope.scope,
            clock=self.clock,
        )
        stack = self.stacks[run.loop.spec.budget is not None, max_retries > 0]
        call = SkillCall(run, definition, params, ctx, max_retries, keep_result=keep_result)
        return await stack(call)
