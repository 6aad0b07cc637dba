"""The Entities view: the entity table and the merge suggestions."""
