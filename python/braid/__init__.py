"""braid: communication for distributed deep-learning training.

``import braid.torch`` registers braid as the torch.distributed backend "braid"
(docs/python.md).
"""
