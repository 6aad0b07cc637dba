"""The Summary view: the scene → chapter → book tree of a novel."""
