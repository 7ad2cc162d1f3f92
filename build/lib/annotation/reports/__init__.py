"""Study reports: the statistics of a study's ratings as HTML, CSV and JSON, with plots."""
