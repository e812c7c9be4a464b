"""Transformer Explorer: `python app.py` serves the explorer with the shipped model.

Binds to 127.0.0.1 locally and to 0.0.0.0 on a Hugging Face Space (where SPACE_ID is set). Without --port,
Gradio takes the first free port from $GRADIO_SERVER_PORT (default 7860) up and prints the address it serves.
"""
import argparse
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # nothing leaves the machine (set before Gradio loads)

from app.ui import CSS, build_demo, theme  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--host", default="0.0.0.0" if os.environ.get("SPACE_ID") else "127.0.0.1")
    ap.add_argument("--port", type=int, default=None,
                    help="serve on this port only (default: the first free one from $GRADIO_SERVER_PORT or 7860)")
    args = ap.parse_args(argv)
    build_demo().launch(server_name=args.host, server_port=args.port, css=CSS, theme=theme(), footer_links=[])


if __name__ == "__main__":
    main()
