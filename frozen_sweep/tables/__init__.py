"""Result records to the studies' tables: runs, tables per study, the paper's numbers and findings, significance,
plots."""
