"""The base of every contract model and the plain field types the config shares with loops
(no expressions: reading the config does not load the expression compiler)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, StringConstraints

__all__ = ["Identifier", "Name", "Strict"]


class Strict(BaseModel):
    """Base of every contract model: unknown keys are errors and instances are immutable.

    Validators are built on first use, so a command that reads no loop builds none; a default
    that is a model is made with ``model_construct()`` to keep importing from building one.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)


Identifier = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$")]
"""Lower-case snake_case, as loop ids are."""

Name = Annotated[str, StringConstraints(min_length=1)]
"""A non-empty name (skill, action, source, event)."""
