/* Intrusive doubly linked lists: the one way quald's job modules keep a set
 * whose items come and go in any order (the queue, the submits being
 * checked, the watched children). A struct list_link lives inside each item
 * and one is the list's head; the list is a ring through its head, so that
 * no operation has a special case for the first or last item (the Linux
 * kernel's list.h and libuv's QUEUE are the model). An item not in a list
 * links to itself. */
#ifndef QUAL_DAEMON_LIST_H
#define QUAL_DAEMON_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list_link {
	struct list_link *prev, *next;
};

/* The item holding link l: list_item(l, struct job, qlink). */
#define list_item(l, type, member) ((type *)((char *)(l) - offsetof(type, member)))

/* For each link l of the list head, first to last. The body must not
 * remove l (restart from the head after a removal). */
#define list_each(l, head) for ((l) = (head)->next; (l) != (head); (l) = (l)->next)

/* An empty list, or an item in none. */
static inline void list_init(struct list_link *l)
{
	l->prev = l->next = l;
}

static inline bool list_empty(const struct list_link *head)
{
	return head->next == head;
}

/* The first item's link, or NULL when the list is empty. */
static inline struct list_link *list_first(const struct list_link *head)
{
	return list_empty(head) ? NULL : head->next;
}

/* Puts l, which is in no list, last in head's list. */
static inline void list_append(struct list_link *head, struct list_link *l)
{
	l->prev = head->prev;
	l->next = head;
	head->prev->next = l;
	head->prev = l;
}

/* Takes l out of its list (nothing for an item in none). */
static inline void list_remove(struct list_link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	list_init(l);
}

#endif
