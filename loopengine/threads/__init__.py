"""Chat sessions: a thread's batches checked and appended atomically at a version (tool calls
answered, call ids fresh, personal data masked, the window pruned), and one session's thread
held in memory and kept equal to the store's."""

from loopengine.threads._batches import mask_pii, new_batch, prune, with_fresh_call_ids
from loopengine.threads._conversation import Conversation

__all__ = [
    "Conversation",
    "mask_pii",
    "new_batch",
    "prune",
    "with_fresh_call_ids",
]
