"""Whole-model teaching pieces built on the codec: what a format does to a real model's outputs."""
