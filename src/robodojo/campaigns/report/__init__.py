"""The campaign report over the results store's episode rows and the episode records: statistics (stats), tables as
markdown and CSV (tables), plots (plots), the HTML pages from Jinja2 templates (html, templates/), what the records
add (failures: the last refusal; tries: killed and retried tries; strips: each episode's image strip), and the
settings of config/report.yaml (settings)."""
