import { request } from "node:http";

export interface PostAnswer {
  status: number;
  body: string;
  /** `X-RateLimit-Reset`: the window the request was counted in. */
  reset: string;
}

/**
 * A POST to `url` from a local source address (127.0.0.x): how a test stands for several
 * callers of a keyless route limited per source address.
 */
export function postFrom(
  url: string,
  localAddress: string,
  headers: Record<string, string>,
  body: string,
): Promise<PostAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", localAddress, headers }, (res) => {
      let text = "";
      res.on("data", (chunk) => {
        text += chunk;
      });
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, body: text, reset: String(res.headers["x-ratelimit-reset"]) }),
      );
    });
    req.on("error", reject);
    req.end(body);
  });
}
