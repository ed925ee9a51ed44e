"""``python -m graphrag_got.config``: prints the settings table; ``--write/--check PAGE``: the settings reference."""

from graphrag_got.common.settings_page import main
from graphrag_got.config import SECTIONS
from graphrag_got.config.docs import settings_table_markdown

raise SystemExit(main(None, settings_table_markdown(), {s: m.__doc__ or "" for s, m in SECTIONS.items()}))
