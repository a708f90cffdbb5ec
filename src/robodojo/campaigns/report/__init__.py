"""The campaign report: statistics, tables and plots over the results store's episode rows."""
