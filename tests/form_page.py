"""Reading a rendered form the way assistive technology does: which fields are marked and
announced as required, and whether an error is linked to its field."""

from __future__ import annotations

from html.parser import HTMLParser


class Page(HTMLParser):
    """Elements by id, and each label's markup by the id it is for."""

    def __init__(self, html: str):
        super().__init__()
        self.by_id: dict[str, dict] = {}
        self.links: list[str] = []
        self.labels: dict[str, str] = {}
        self._label: str | None = None
        self._label_html: list[str] = []
        self.feed(html)
        self.html = html

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.by_id[attrs["id"]] = {"tag": tag, **attrs}
        if tag == "a" and attrs.get("href", "").startswith("#"):
            self.links.append(attrs["href"][1:])
        if tag == "label" and attrs.get("for"):
            self._label, self._label_html = attrs["for"], []
        elif self._label is not None:
            self._label_html.append(self.get_starttag_text())

    def handle_endtag(self, tag):
        if tag == "label" and self._label is not None:
            self.labels[self._label] = "".join(self._label_html)
            self._label = None

    def handle_data(self, data):
        if self._label is not None:
            self._label_html.append(data)

    def required(self, field_id: str) -> bool:
        element = self.by_id[field_id]
        marked = "required-mark" in self.labels.get(field_id, "")
        announced = "required" in element and element.get("aria-required") == "true"
        assert marked == announced, f"{field_id}: marked {marked}, announced {announced}"
        return announced

    def assert_linked_error(self, field_id: str, words: str) -> None:
        element = self.by_id[field_id]
        assert element.get("aria-invalid") == "true", field_id
        assert f"{field_id}_error" in element.get("aria-describedby", "").split(), element
        assert f'id="{field_id}_error"' in self.html
        error = self.html.split(f'id="{field_id}_error"', 1)[1].split("\n  </div>", 1)[0]
        assert words in error, error
        assert field_id in self.links, f"the summary does not link to {field_id}"


def legend_count(html: str) -> int:
    return html.count('data-testid="required-legend"')
