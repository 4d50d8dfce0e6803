"""A site's own rules for its machines, as envdoctor checks (ids `site.*`).

`settings` reads what the site standardised on, `rules` judges a report's facts against it (pure
functions), and `checks` registers the rules that have their setting with envdoctor.
"""
