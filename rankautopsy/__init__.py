"""rankautopsy: which rank of a distributed training job died first, when, and why."""

__version__ = "0.1.0"
