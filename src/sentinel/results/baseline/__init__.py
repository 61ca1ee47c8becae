"""Bands learnt from the site's own nights: ``sentinel baseline`` and ``sentinel accept``."""
