"""Reading the report's HTML in tests: a tree of elements from Python's html.parser, and lookups over it."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

# Elements that never have an end tag in HTML; they must not stay open on the parser's stack.
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Element:
    """One element: tag, attributes, its text (descendants' included) and its children."""

    tag: str
    attrs: dict[str, str]
    text: str = ""
    children: list[Element] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        """The words of its class attribute."""
        return set(self.attrs.get("class", "").split())

    def find(self, tag: str, cls: str | None = None) -> list[Element]:
        """Descendants with this tag (and class)."""
        found: list[Element] = []
        for child in self.children:
            if child.tag == tag and (cls is None or cls in child.classes):
                found.append(child)
            found.extend(child.find(tag, cls))
        return found


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {name: value or "" for name, value in attrs})
        self.stack[-1].children.append(element)
        if tag not in _VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Element(tag, {name: value or "" for name, value in attrs}))

    def handle_endtag(self, tag: str) -> None:
        # Close up to the matching open element (tolerates an omitted end tag below it).
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        for element in self.stack:
            element.text += data


def parse_html(text: str) -> Element:
    """The document's root element."""
    builder = _TreeBuilder()
    builder.feed(text)
    builder.close()
    return builder.root


def parse_file(path: Path) -> Element:
    """The root element of an HTML file."""
    return parse_html(path.read_text(encoding="utf-8"))
