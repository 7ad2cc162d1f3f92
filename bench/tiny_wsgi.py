"""A WSGI app that answers every request with a fixed JSON body of a next item's size, for
bench/loop_ab_parts.py: what an HTTP server costs per request, without Django's share."""

BODY = b'{"state":"rate","assignment":{"responses":[' + b",".join([b'{"number":1,"content":"' + b"x" * 900 + b'"}'] * 3) + b"]}}"


def application(environ, start_response):
    length = int(environ.get("CONTENT_LENGTH") or 0)
    if length:
        environ["wsgi.input"].read(length)
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(BODY))),
                              ("Vary", "Cookie"), ("X-Frame-Options", "DENY")])
    return [BODY]
