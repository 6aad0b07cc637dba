"""What the entities say: alias clustering, entity extraction, profiles and the entity graph."""
