"""Knowledge bases and the corrective pipeline that answers from them (``corrective``)."""

__all__ = ["corrective"]
