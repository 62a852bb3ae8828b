"""A stand-in for a person's browser in the OAuth tests: opens the
authorization URL, keeps cookies, follows the authorization server's
redirects through its login and consent pages, and lands on the client's
redirect URI like a browser would.

Usage:
    oauth_browser.py URL                  follow every redirect, the last one
                                          included (`mcpyard login` receives it
                                          on its loopback port), as $BROWSER
    oauth_browser.py --print-redirect URL stop at the first redirect to
                                          127.0.0.1 outside the authorization
                                          server and print its URL (what a
                                          person copies from the address bar
                                          for `mcpyard login --no-browser`)

Loopback only: any other host is refused.
"""

import http.cookiejar
import sys
import urllib.error
import urllib.parse
import urllib.request

MAX_HOPS = 20


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def main():
    args = sys.argv[1:]
    print_redirect = args[:1] == ["--print-redirect"]
    if print_redirect:
        args = args[1:]
    url = args[0]
    start = urllib.parse.urlsplit(url)
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect())
    for _ in range(MAX_HOPS):
        parts = urllib.parse.urlsplit(url)
        if parts.hostname not in ("127.0.0.1", "localhost"):
            sys.exit(f"oauth_browser: refusing a non-loopback URL ({parts.hostname})")
        if print_redirect and parts.netloc != start.netloc:
            print(url)
            return
        try:
            with opener.open(url, timeout=30) as resp:
                status, location = resp.status, resp.headers.get("Location")
                body = resp.read()
        except urllib.error.HTTPError as e:
            status, location = e.code, e.headers.get("Location")
            body = e.read()
        if status in (301, 302, 303, 307, 308) and location:
            url = urllib.parse.urljoin(url, location)
            continue
        if status >= 400:
            sys.exit(f"oauth_browser: HTTP {status} at {parts.scheme}://{parts.netloc}{parts.path}: {body[:300]!r}")
        return
    sys.exit("oauth_browser: too many redirects")


main()
