//! Free: the fast path into the CPU's active slab, full slabs onto the CPU's partial list,
//! empty ones off the node lists and back to the page allocator.

#[allow(clippy::wildcard_imports)]
use super::*;

impl<'a, E: EventSink, L: RawLock> KmemCache<'a, E, L> {
    /// Free an object on `cpu` (kernel `kmem_cache_free`). A refused free changes nothing.
    ///
    /// The fast paths take no shared lock: into the CPU's own active slab, its bit cleared
    /// and the object onto the CPU's freelist under the CPU's own lock (`free_fastpath`);
    /// into another CPU's active slab or a slab on any CPU's partial list, its bit cleared
    /// and the object pushed onto the slab's remote freelist with one compare-exchange
    /// (`free_frozen`). Any other free (into a full slab or one on a node's list) takes the
    /// slab's lock, and the lists' when it moves the slab.
    pub fn free(&self, cpu: Cpu, obj: SlabObject) -> Result<(), SlabError> {
        self.check_cpu(cpu)?;
        let slot = self.checked_slot(obj)?;
        if slot.owner() == Some((cpu.id(), Held::Active)) && self.free_local(cpu, slot, obj)? {
            return Ok(());
        }
        if !slot.claim(obj.tag(), obj.index) {
            return Err(SlabError::DoubleFree { slab: obj.slab, index: obj.index });
        }
        if let Push::Done = slot.push_remote(obj.index, cpu.id()) {
            self.touch_slab_page(cpu.id(), obj.slab);
            self.count(cpu.id(), SlabStat::FreeSlowpath);
            self.count(cpu.id(), SlabStat::FreeFrozen);
            return Ok(());
        }
        self.free_slow(cpu, obj)
    }

    /// The slot of a handle, checked to be this cache's and to hold the handle's slab still
    /// (the kernel's `virt_to_slab` and `check_valid_pointer`, from the handle instead of an
    /// address): no lock, one acquire load.
    pub(super) fn checked_slot(&self, obj: SlabObject) -> Result<&SlotSlab, SlabError> {
        if obj.cache != self.id {
            return Err(SlabError::ForeignObject { slab: obj.slab, index: obj.index });
        }
        let slot = self.slots.get(obj.slot);
        match slot.and_then(|s| Some((s, s.ident()?))) {
            Some((slot, (tag, objects))) if tag == obj.tag() => {
                if obj.index >= objects {
                    return Err(SlabError::BadIndex {
                        slab: obj.slab,
                        index: u64::from(obj.index),
                        objects,
                    });
                }
                Ok(slot)
            }
            // This cache's handle to a slab given back: it was empty then, so this object had
            // been freed.
            _ => Err(SlabError::DoubleFree { slab: obj.slab, index: obj.index }),
        }
    }

    /// A free into what the slot says is this CPU's active slab: `false` (nothing done) if
    /// it no longer is, which only a flush run for this CPU by another thread makes happen.
    fn free_local(&self, cpu: Cpu, slot: &SlotSlab, obj: SlabObject) -> Result<bool, SlabError> {
        let mut c = self.cpu_slab[cpu.id().index()].slabs.lock();
        let active = c.slab.as_ref().is_some_and(|s| s.slot == obj.slot && s.serial == obj.serial);
        if !active {
            return Ok(false);
        }
        if !slot.claim(obj.tag(), obj.index) {
            return Err(SlabError::DoubleFree { slab: obj.slab, index: obj.index });
        }
        c.freelist.push(obj.index);
        self.count(cpu.id(), SlabStat::FreeFastpath);
        Ok(true)
    }

    /// The locked path of a free whose object's bit is already clear (so no other free of it
    /// can succeed, and its slab is not discarded before it is listed).
    fn free_slow(&self, cpu: Cpu, obj: SlabObject) -> Result<(), SlabError> {
        // A claimed object's slab is in the directory: it is discarded only once every object
        // is on a freelist.
        let slab = self.dir(obj.slab).lock().get(&obj.slab.0).cloned();
        let Some(slab) = slab.filter(|s| s.serial == obj.serial) else {
            return Err(SlabError::DoubleFree { slab: obj.slab, index: obj.index });
        };
        loop {
            let done = match self.free_quick(cpu, &slab, obj) {
                FreeNext::Done => return Ok(()),
                FreeNext::ToCpuPartial => self.free_to_cpu_partial(cpu, &slab, obj)?,
                FreeNext::NodeList => self.free_on_node(cpu, &slab, obj)?,
            };
            if done {
                return Ok(());
            }
            // The slab moved between the two looks: look again.
        }
    }

    /// The free as far as it goes with the slab lock alone.
    pub(super) fn free_quick(&self, cpu: Cpu, slab: &Slab<L>, obj: SlabObject) -> FreeNext {
        let mut st = slab.state.lock();
        match st.place {
            // Held by a CPU since the free looked (or being taken active): onto the remote
            // freelist, which the CPU takes when it lets go or its own list runs out.
            Place::CpuSlab(_) | Place::CpuPartial(_) => {
                self.slot(slab).push_any(obj.index);
                self.touch_slab_page(cpu.id(), obj.slab);
                self.count(cpu.id(), SlabStat::FreeSlowpath);
                self.count(cpu.id(), SlabStat::FreeFrozen);
                FreeNext::Done
            }
            Place::NodePartial(_) if st.inuse > 1 => {
                st.list_free(obj.index);
                self.touch_slab_page(cpu.id(), obj.slab);
                self.count(cpu.id(), SlabStat::FreeSlowpath);
                FreeNext::Done
            }
            Place::Full if self.layout.has_cpu_partial => FreeNext::ToCpuPartial,
            // A claimed object keeps its slab from being discarded, so not `Discarded`.
            Place::NodePartial(_) | Place::Full | Place::Discarded => FreeNext::NodeList,
        }
    }

    /// Free into a full slab and put it on the freeing CPU's partial list (kernel
    /// `put_cpu_partial` with drain), moving a full list to the node lists first. `false` if
    /// the slab is no longer full.
    pub(super) fn free_to_cpu_partial(
        &self,
        cpu: Cpu,
        slab: &Arc<Slab<L>>,
        obj: SlabObject,
    ) -> Result<bool, SlabError> {
        let mut discards = Discards::new();
        {
            let mut c = self.cpu_slab[cpu.id().index()].slabs.lock();
            {
                let mut st = slab.state.lock();
                if st.place != Place::Full {
                    return Ok(false);
                }
                st.list_free(obj.index);
                st.hold_partial(cpu.id(), self.slot(slab));
                self.touch_slab_page(cpu.id(), obj.slab);
            }
            if c.partial.len() as u32 >= self.layout.cpu_partial_slabs {
                let old = core::mem::take(&mut c.partial);
                self.put_partials(cpu.id(), old, &mut discards);
                self.count(cpu.id(), SlabStat::CpuPartialDrain);
            }
            c.partial.push(Arc::clone(slab));
        }
        self.count(cpu.id(), SlabStat::FreeSlowpath);
        self.count(cpu.id(), SlabStat::CpuPartialFree);
        self.discard_all(cpu, discards)?;
        Ok(true)
    }

    /// Free into a slab on its node's partial list that becomes empty, or into a full slab
    /// with per-CPU partial lists off (kernel `__slab_free`'s list work). `false` if the slab
    /// moved meanwhile.
    pub(super) fn free_on_node(
        &self,
        cpu: Cpu,
        slab: &Arc<Slab<L>>,
        obj: SlabObject,
    ) -> Result<bool, SlabError> {
        let n = &self.node[slab.node.index()];
        let discard = {
            let mut lists = n.list_lock.lock();
            let mut st = slab.state.lock();
            let key = match st.place {
                Place::NodePartial(key) => Some(key),
                Place::Full if !self.layout.has_cpu_partial => None,
                _ => return Ok(false),
            };
            st.list_free(obj.index);
            self.touch_slab_page(cpu.id(), obj.slab);
            self.count(cpu.id(), SlabStat::FreeSlowpath);
            if st.inuse == 0 && lists.nr_partial() >= self.layout.min_partial {
                if let Some(key) = key {
                    lists.remove(key);
                    self.count(cpu.id(), SlabStat::FreeRemovePartial);
                }
                st.place = Place::Discarded;
                true
            } else {
                if key.is_none() {
                    lists.add(slab, &mut st, true);
                    self.count(cpu.id(), SlabStat::FreeAddPartial);
                }
                false
            }
        };
        if discard {
            self.discard_all(cpu, alloc::vec![Arc::clone(slab)])?;
        }
        Ok(true)
    }

    /// Move slabs taken off a per-CPU partial list to their nodes' lists, keeping aside the
    /// empty ones a node has enough of (kernel `__put_partials`). The list's head goes first.
    pub(super) fn put_partials(
        &self,
        cpu: CpuId,
        slabs: Vec<Arc<Slab<L>>>,
        discards: &mut Discards<L>,
    ) {
        for slab in slabs.into_iter().rev() {
            let mut lists = self.node[slab.node.index()].list_lock.lock();
            let mut st = slab.state.lock();
            st.release_partial(self.slot(&slab), slab.objects);
            self.touch_slab_page(cpu, slab.pfn);
            if st.inuse == 0 && lists.nr_partial() >= self.layout.min_partial {
                st.place = Place::Discarded;
                drop(st);
                self.count(cpu, SlabStat::DeactivateEmpty);
                discards.push(slab);
            } else {
                lists.add(&slab, &mut st, true);
                self.count(cpu, SlabStat::FreeAddPartial);
            }
        }
    }

    /// Take a CPU's active slab, with the CPU's freelist, back to its node (kernel
    /// `deactivate_slab`): discarded if empty
    /// and the node has enough, listed if it has free objects (at the tail if other CPUs
    /// freed into it, so the node hands out the emptier ones later), else on no list.
    pub(super) fn deactivate_slab(
        &self,
        cpu: CpuId,
        slab: Arc<Slab<L>>,
        cpu_freelist: Vec<u32>,
        discards: &mut Discards<L>,
    ) {
        let mut lists = self.node[slab.node.index()].list_lock.lock();
        let mut st = slab.state.lock();
        self.touch_slab_page(cpu, slab.pfn);
        let remote_frees = st.unfreeze(self.slot(&slab), cpu_freelist, slab.objects);
        if remote_frees {
            self.count(cpu, SlabStat::DeactivateRemoteFrees);
        }
        if st.inuse == 0 && lists.nr_partial() >= self.layout.min_partial {
            st.place = Place::Discarded;
            drop(st);
            self.count(cpu, SlabStat::DeactivateEmpty);
            discards.push(slab);
        } else if st.nr_free() > 0 {
            lists.add(&slab, &mut st, remote_frees);
            self.count(
                cpu,
                if remote_frees { SlabStat::DeactivateToTail } else { SlabStat::DeactivateToHead },
            );
        } else {
            st.place = Place::Full;
            self.count(cpu, SlabStat::DeactivateFull);
        }
    }

    /// Give slabs already marked `Discarded` back to the page allocator on `cpu` (kernel
    /// `discard_slab`): out of the directory and the node's counts, its slot given up, then
    /// `free_pages`. Called
    /// with no lock held.
    pub(super) fn discard_all(&self, cpu: Cpu, discards: Discards<L>) -> Result<(), SlabError> {
        let mut result = Ok(());
        for slab in discards {
            let n = &self.node[slab.node.index()];
            // Out of the directory and the node's counts together (see `new_slab`).
            let mut dir = self.dir(slab.pfn).lock();
            dir.remove(&slab.pfn.0);
            n.nr_slabs.fetch_sub(1, Relaxed);
            n.total_objects.fetch_sub(u64::from(slab.objects), Relaxed);
            drop(dir);
            self.slot(&slab).vacate();
            self.slot_pool.lock().free.push(slab.slot);
            self.count(cpu.id(), SlabStat::FreeSlab);
            if let Err(e) = self.pa.free_pages(cpu, slab.pfn, slab.order) {
                result = Err(SlabError::PageFree(e));
            }
        }
        result
    }
}
