"""Loaded by every Python program the blind rounds start (their PYTHONPATH names this folder).

Python's http.server writes an answer's headers and its body in two writes; with Nagle's
algorithm on, the body waits for the peer's delayed acknowledgement of the headers, 40 ms on
every answer on loopback, which made a run of the checks through a proxy ten times slower than
against the mock itself. Turning Nagle off changes no byte of any answer.
"""

import socketserver

socketserver.StreamRequestHandler.disable_nagle_algorithm = True
