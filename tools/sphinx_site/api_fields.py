"""API field lists whose body is a list hold the list itself, not a paragraph around it.

Upstream gap: Sphinx 7.4.7 docfields.Field.make_field wraps every field body in a paragraph, so
napoleon's multi-item "Returns" list lands in <p> (a <ul> is no paragraph content). This
post-transform, in the HTML build only, lifts such a list out of its paragraph.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform


class UnwrapFieldLists(SphinxPostTransform):
    default_priority = 900  # after the references in the list are resolved
    formats = ("html",)

    def run(self, **kwargs) -> None:
        for paragraph in list(self.document.findall(nodes.paragraph)):
            if (isinstance(paragraph.parent, nodes.field_body) and len(paragraph.children) == 1
                    and isinstance(paragraph[0], nodes.bullet_list)):
                paragraph.replace_self(paragraph[0])


def setup(app: Sphinx) -> None:
    app.add_post_transform(UnwrapFieldLists)
