"""The CLI's commands, a module each; ``cli`` imports a command's module only when it runs, so a
command loads only what it uses."""

__all__ = ["admin", "catalog", "chat", "executions", "history", "metrics", "run", "validate"]
