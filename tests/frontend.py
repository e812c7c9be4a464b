"""A blank page that imports the installed Gradio front end's own files, for tests that run its code in Chromium
(its plotly, its status class): the files are served to the page from the installed package, nothing from outside."""
from app.gradio_adapter import frontend_assets

BLANK = "<!DOCTYPE html><html><head><meta charset='utf-8'></head><body></body></html>"


def open_frontend(page):
    """Open http://plots.test/index.html, a blank page under which /assets/<name> is the front end's file."""
    assets = {p.name: p for p in frontend_assets()} | {p.name: p for p in frontend_assets()[0].parent.glob("*.css")}

    def serve(route):
        name = route.request.url.rsplit("/", 1)[-1]
        if name == "index.html":
            return route.fulfill(body=BLANK, content_type="text/html")
        if name in assets:
            kind = "text/javascript" if name.endswith(".js") else "text/css"
            return route.fulfill(body=assets[name].read_bytes(), content_type=kind)
        return route.abort()
    page.route("http://plots.test/**", serve)
    page.goto("http://plots.test/index.html")
