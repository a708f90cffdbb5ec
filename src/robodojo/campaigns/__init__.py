"""Evaluation campaigns over the episode runner: a grid of episodes (tasks x variants x seeds x agents x LLMs x
conditions) run resumably on local workers or a Ray cluster, their results in SQLite, and the reports."""
