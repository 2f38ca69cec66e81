from pgrecall.app import App
from pgrecall.config import Settings


def test_add_get(settings: Settings) -> None:
    with App(settings) as app:
        w = app.entries.add("default", text="Die Häuser am See sind im Winter kalt und still.", title="Seen")
        assert w.entry.language == "german"
        assert app.entries.get("default", w.entry.id).body.startswith("Die")
