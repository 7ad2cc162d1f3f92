"""gunicorn's settings wherever Concord is served by it (the Dockerfile, docker-compose, the benches, the production
tests): gunicorn reads ./gunicorn.conf.py from the folder it starts in. The command lines give the sizes.

preload_app: the master imports Concord once (config/wsgi.py loads every view and what they import: pandas, SciPy,
matplotlib, about 2.3 s of CPU) and forks its workers from it, so a worker answers its first request as fast as
its thousandth, and one that is restarted after a crash is ready at once. Without it each worker made that import
on its first request: four workers on two cores answered nothing for the first 6 s of a launch. Code changes need
a restart (not a HUP), as a container deploy does anyway.

keepalive: a balancer (HAProxy, nginx) keeps its connections to a node open and reuses them. With gunicorn's
default of 2 s, a node could close one just as the balancer sent a request on it, and HAProxy then closes the
client's connection without an answer (a reader in tests/prod/test_three_nodes.py got exactly that, under CI's
load). 75 s is longer than a balancer keeps an idle connection (HAProxy purges them within 5 s, nginx's
keepalive_timeout is 60 s), so the balancer always closes first. gthread holds idle connections in its poller, not
in a thread.
"""

preload_app = True
keepalive = 75
