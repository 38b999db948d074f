// The tools a view registers (the App SDK's registerTool): once a view a chat opened is
// initialized and says it has tools (appCapabilities.tools), the page lists them (tools/list to
// the view) and gives them to the server, which offers them to that chat's model while the view
// is open (PUT /apps/views/<viewId>/tools); then it waits for the model's calls (POST
// .../tools/next), performs each in the view (tools/call to the view) and posts the view's
// answer (POST .../tools/calls/<id>). A view that says its tools changed is listed again.

const post = (url, method, body) => fetch(url, {
  method,
  credentials: "same-origin",
  headers: { "content-type": "application/json" },
  body: body === undefined ? undefined : JSON.stringify(body),
});

async function list(view) {
  const bridge = view.bridge;
  if (!bridge) return false;
  const listed = await bridge.listTools({});
  const response = await post(`${view.client.base}/tools`, "PUT", { tools: (listed && listed.tools) || [] });
  return response.ok;
}

async function serve(view) {
  while (view.bridge) {
    let asked;
    try {
      const response = await post(`${view.client.base}/tools/next`, "POST");
      if (!response.ok) return;  // the view is gone (404) or inactive
      asked = (await response.json()).call;
    } catch (error) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      continue;
    }
    if (!asked || !view.bridge) continue;
    let result;
    try {
      result = await view.bridge.callTool({ name: asked.name, arguments: asked.arguments || {} });
    } catch (error) {
      result = { content: [{ type: "text", text: `the view failed: ${error.message || error}` }], isError: true };
    }
    await post(`${view.client.base}/tools/calls/${encodeURIComponent(asked.id)}`, "POST", { result }).catch(() => {});
  }
}

export async function offerTools(view) {
  const capabilities = view.bridge && view.bridge.getAppCapabilities();
  if (!capabilities || !capabilities.tools || !view.client.sessionId || view.restored) return;
  view.bridge.fallbackNotificationHandler = async (notification) => {
    if (notification.method === "notifications/tools/list_changed") await list(view).catch(() => {});
  };
  try {
    if (await list(view)) serve(view);
  } catch (error) {
    console.error(`view of app ${view.appId}: its tools could not be listed: ${error.message || error}`);
  }
}
