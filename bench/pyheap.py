import gc, random, string, time
gc.disable()
random.seed(1)
words = [''.join(random.choices(string.ascii_lowercase, k=random.randint(3, 12))) for _ in range(5000)]
data = []
for i in range(1_000_000):
    data.append({'id': i, 'name': random.choice(words) + str(i), 'score': random.random(),
                 'tags': [random.choice(words) for _ in range(3)]})
print('ready', flush=True)
time.sleep(3600)
