"""``sentinel init``: discover a site and write its configuration."""
