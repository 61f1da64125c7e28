"""Descriptors (aai.json): one normalised model, one adapter per shape, schemas and validation."""

from aai_gateway.descriptor.model import Annotations, Binding, Descriptor, Name, Tool

__all__ = ["Annotations", "Binding", "Descriptor", "Name", "Tool"]
