"""What a chat turn's request attaches besides its text (pure): the update ids of the model
context of views outside a chat that the page showed beside it (`"modelContext"`), and the
attachments of a view's `ui/message` (`"attachments"`: `{app, content}` each), checked with the
same rules as a view's `ui/update-model-context` (actors/views/modelcontext.py) and kept as the
model reads them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from actors.views.modelcontext import for_model, read_blocks
from actors.views.refusals import BadParams
from supervisor.model.errors import BadRequest

UPDATE_ID = re.compile(r"update-[A-Za-z0-9_-]{1,64}")
UPDATE_IDS_MAX = 50
ATTACHMENTS_MAX = 10


def update_ids(body: Mapping[str, Any]) -> tuple[str, ...]:
    raw = body.get("modelContext")
    if raw is None:
        return ()
    if (
        not isinstance(raw, list)
        or len(raw) > UPDATE_IDS_MAX
        or not all(isinstance(i, str) and UPDATE_ID.fullmatch(i) for i in raw)
    ):
        raise BadRequest(
            f"'modelContext' must be a list of at most {UPDATE_IDS_MAX} update ids, as"
            " ui/update-model-context answers them ('update-…')"
        )
    return tuple(raw)


def attachments(body: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    raw = body.get("attachments")
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) > ATTACHMENTS_MAX:
        raise BadRequest(
            f"'attachments' must be a list of at most {ATTACHMENTS_MAX}"
            ' {"app": "<app id>", "content": [<content block>, …]} objects'
        )
    kept = []
    for index, item in enumerate(raw):
        where = f"attachments[{index}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("app"), str):
            raise BadRequest(f"{where} must be an object with an 'app' string")
        content = item.get("content")
        if not isinstance(content, list):
            raise BadRequest(f"{where}.content must be a list of content blocks")
        try:
            blocks = read_blocks(content, f"{where}.content")
        except BadParams as error:
            raise BadRequest(error.message) from None
        kept.append(for_model(item["app"], blocks, None))
    return tuple(kept)
