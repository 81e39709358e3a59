"""Prefetching: runs a batch iterator in a background thread, a few batches ahead of training.

The host prepares the next batches (decoding, augmentation, mixup) while the device runs the
current step; the order of the batches is that of the iterator, so prefetching changes nothing
but the time they take.
"""
import queue
import threading


class Prefetch:
  """Runs an iterator in a daemon thread, up to `size` items ahead of the consumer.

  Exceptions in the worker are re-raised in the consumer. close() (or dropping the object)
  stops the worker; it is a daemon, so it can never block interpreter exit either.
  """

  def __init__(self, iterator, size: int = 2):
    self._queue, self._stop, self._done = queue.Queue(max(1, size)), threading.Event(), False
    # The worker must not hold `self`, or the object could never be collected and stopped.
    self._thread = threading.Thread(
        target=_prefetch_worker, args=(iterator, self._queue, self._stop), daemon=True)
    self._thread.start()

  def __iter__(self):
    return self

  def __next__(self):
    item = _END if self._done else self._queue.get()
    if item is _END or isinstance(item, _Failure):
      self._done = True
      self.close()
      if isinstance(item, _Failure):
        raise item.error
      raise StopIteration
    return item

  def close(self):
    self._stop.set()

  def __del__(self):
    self.close()


_END = object()


class _Failure:  # wraps a worker's exception on its way to the consumer

  def __init__(self, error: BaseException):
    self.error = error


def _prefetch_worker(iterator, q: queue.Queue, stop: threading.Event):
  def put(item) -> bool:
    while not stop.is_set():  # polls so that close() is noticed even with a full queue
      try:
        q.put(item, timeout=0.1)
        return True
      except queue.Full:
        pass
    return False

  try:
    for item in iterator:
      if not put(item):
        return
    put(_END)
  except BaseException as e:  # pylint: disable=broad-except
    put(_Failure(e))
