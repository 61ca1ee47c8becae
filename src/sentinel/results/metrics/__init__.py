"""The suite's results for Prometheus: ``sentinel metrics`` (:mod:`.command`).

:mod:`.names` maps the declared units to Prometheus's base units and free
text to bounded reasons; :mod:`.families` builds the metric families from
what ``sentinel report`` reads.
"""
