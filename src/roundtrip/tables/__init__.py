"""The table engine: cells with bootstrap CIs and footnotes, written as CSV, Markdown and LaTeX
(:mod:`.engine`), and matrix tables with averages (:mod:`.matrix`, MediBench's layout).

Importing it costs pandas, not torch: table jobs stay light.
"""
from roundtrip.tables.engine import (
                                     Cell,
                                     Column,
                                     Table,
                                     build_table,
                                     exact_note,
                                     format_value,
                                     item_cell,
                                     metric_files,
                                     metric_column,
                                     read_per_item,
                                     tex_escape,
                                     to_csv_frame,
                                     to_latex,
                                     to_markdown,
                                     write_frame,
                                     write_table,
)

__all__ = ["Cell", "Column", "Table", "build_table", "exact_note", "format_value", "item_cell", "metric_column", "metric_files",
           "read_per_item", "tex_escape", "to_csv_frame", "to_latex", "to_markdown",
           "write_frame", "write_table"]
