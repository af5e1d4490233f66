/* The bounds on bytes queued for replies that carry stored lines
 * (replycap.h). */
#include "daemon/replycap.h"

static size_t queued;
static struct list_link waiters = { &waiters, &waiters };
static bool waking;

void replycap_waiter_init(struct replycap_waiter *w, void (*wake)(struct replycap_waiter *w))
{
	list_init(&w->link);
	w->wake = wake;
}

bool replycap_room(void)
{
	return queued < REPLYCAP_GLOBAL;
}

void replycap_take(size_t n)
{
	queued += n;
}

void replycap_give(size_t n)
{
	struct list_link *l;

	queued = n < queued ? queued - n : 0;
	/* A wake reads a chunk and may complete a write at once; that give
	 * wakes nobody, the loop below goes on instead. */
	if (waking)
		return;
	waking = true;
	while (replycap_room() && (l = list_first(&waiters))) {
		struct replycap_waiter *w = list_item(l, struct replycap_waiter, link);

		list_remove(l);
		w->wake(w);
	}
	waking = false;
}

void replycap_wait(struct replycap_waiter *w)
{
	if (list_empty(&w->link))
		list_append(&waiters, &w->link);
}

void replycap_unwait(struct replycap_waiter *w)
{
	list_remove(&w->link);
}

size_t replycap_queued(void)
{
	return queued;
}
