import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (-((-b) + 1))
        t1 = (b & (a + (1 ^ (1 * 3))))
        acc = a
        for j in range(3):
            acc = acc + t1
        t99 = a @ b
        pto.store(o + i, acc)
