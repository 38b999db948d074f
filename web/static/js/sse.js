// Server-sent events read from a fetch() response, for the two places the page reads them: a
// chat turn (chat.js) and a view's call held for the person (host/viewclient.js).
// EventSource cannot POST, so the page reads the body itself; this is the one reader of the
// format.
//
//   for await (const { event, data } of frames(response)) { ... }
//
// Each frame ends at a blank line (\n, \r\n or \r line ends). `event` is the frame's event name
// ("message" when it has none) and `data` its data lines joined with \n, one space after the
// colon dropped as the format says. A frame without data (a keep-alive comment) is skipped.

export function parse(frame) {
  let event = "message";
  const data = [];
  for (const line of frame.split(/\r\n|\r|\n/)) {
    const colon = line.indexOf(":");
    if (colon === 0) continue;  // a comment
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  return data.length ? { event, data: data.join("\n") } : null;
}

export async function* frames(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const end = /\r\n\r\n|\n\n|\r\r/;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let found;
    while ((found = end.exec(buffer)) !== null) {
      const frame = parse(buffer.slice(0, found.index));
      buffer = buffer.slice(found.index + found[0].length);
      if (frame) yield frame;
    }
  }
}
