"""Context slices for prompts (SPEC §7), built from verified material."""
