// The two ways the view host says no: a Refusal is why a view is not rendered (said on the
// canvas, as it is); an rpcError is the JSON-RPC error of a view's own request, which AppBridge
// passes on to the view with its code.

export class Refusal extends Error {}

export function rpcError(code, message, data) {
  const error = new Error(message);
  error.code = Number.isSafeInteger(code) ? code : -32603;
  if (data !== undefined) error.data = data;
  return error;
}
