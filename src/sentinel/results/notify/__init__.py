"""The morning summary sent where a site reads it: ``sentinel notify`` (:mod:`.command`).

:mod:`.message` writes the summary of ``sentinel report`` as a mail (plain
text and HTML) and as a webhook's JSON; :mod:`.send` delivers them.
"""
