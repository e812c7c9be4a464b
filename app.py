"""Transformer Explorer: `python app.py` serves the explorer with the shipped model.

Binds to 127.0.0.1 locally and to 0.0.0.0 on a Hugging Face Space (where SPACE_ID is set). Without --port,
Gradio takes the first free port from $GRADIO_SERVER_PORT (default 7860) up and prints the address it serves.
The model is read from $EXPLORER_MODEL_DIR (default assets/); if one of its files is missing or damaged, the app
says which and how to get a good copy, and exits with status 2 instead of serving a half-working page.
"""
import argparse
import os
import sys

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # nothing leaves the machine (set before Gradio loads)
os.environ.setdefault("GRADIO_ANALYTICS_MAX_EVENTS", "1000")  # Gradio's in-memory record of past events: bounded

from app.i18n import i18n  # noqa: E402
from app.shared import SESSIONS_KEPT, get_translator, limit_malloc_arenas  # noqa: E402
from app.style import page_arguments, theme  # noqa: E402
from app.ui import build_demo  # noqa: E402
from app.views import warm  # noqa: E402
from core.checkpoint import AssetError  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--host", default="0.0.0.0" if os.environ.get("SPACE_ID") else "127.0.0.1")
    ap.add_argument("--port", type=int, default=None,
                    help="serve on this port only (default: the first free one from $GRADIO_SERVER_PORT or 7860)")
    args = ap.parse_args(argv)
    limit_malloc_arenas()  # before the server's threads start
    try:
        get_translator()  # the model first: a missing or damaged file stops here, with a message that names it
    except AssetError as e:
        print(f"Transformer Explorer cannot start. {e}", file=sys.stderr)
        return 2
    demo = build_demo()
    warm(demo.tab_views)  # the views that read no sentence, drawn while the server starts
    demo.launch(server_name=args.host, server_port=args.port, theme=theme(), **page_arguments(demo), i18n=i18n(),
                footer_links=[], state_session_capacity=SESSIONS_KEPT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
