"""Reproduction of the papers' tables: table specs (tables.py), config files (config_file.py), the runner and the report."""
from .tables import TABLES, Dataset, Row, System, Table

__all__ = ["TABLES", "Dataset", "Row", "System", "Table"]
